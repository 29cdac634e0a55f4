//! The ublk server: a device added to (or, after a crash, recovered from)
//! the kernel's ublk driver through /dev/ublk-control, one thread per
//! hardware queue taking the kernel's requests from its io_uring and running
//! them on the engine device, until a stop flag is set; then the device is
//! stopped and deleted.
//!
//! Lifecycle (libublk's `UblkCtrl`, one control command each):
//! * ADD_DEV (USER_RECOVERY where the driver has it), then SET_PARAMS at
//!   once: a refused parameter deletes the device before any queue exists.
//! * Queue threads FETCH every tag; START_DEV makes `/dev/ublkbN`; the
//!   `ready` callback runs (the caller says "serving /dev/ublkbN").
//! * The stop flag: a watcher sends STOP_DEV, every queue's fetches end,
//!   the threads return, and DEL_DEV removes the device.
//! * A server that dies (kill -9) leaves a USER_RECOVERY device in place,
//!   its I/O queued (QUIESCED). [`Options::recover`] attaches to it:
//!   START_USER_RECOVERY, queues fetch again, END_USER_RECOVERY resumes I/O
//!   (requests the dead server had taken are reissued with REISSUE). What
//!   the new server reads is what its engine device holds: recovery keeps
//!   the data only where the engine's store outlived the old process.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::{UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, BufDescList, UblkError, UblkFlags, UblkIORes};
use zmem_device::BlockDevice;
use zmem_nbd::{execute_io, FailureCounts, Failures};

use crate::params::{params, recovery_flags, Options, IO_BUF_BYTES};
use crate::request::{command, data_bytes, errno, Request};

/// The kernel's control device: present once `ublk_drv` is loaded.
pub const CONTROL: &str = "/dev/ublk-control";

/// The device, once the kernel serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// N of `/dev/ublkbN`.
    pub id: u32,
    /// `/dev/ublkbN`.
    pub path: String,
    pub queues: u16,
    pub depth: u16,
    /// Created with USER_RECOVERY: a dead server leaves the device in place.
    pub recoverable: bool,
    /// Attached to a device a dead server left (not a new one).
    pub recovered: bool,
}

fn err(what: &str, e: libublk::UblkError) -> io::Error {
    io::Error::other(format!("{what}: {e}"))
}

/// Refused before anything is created: no control device means no driver.
pub fn check_driver() -> io::Result<()> {
    if std::fs::metadata(CONTROL).is_err() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{CONTROL} is missing: the kernel's ublk driver is not loaded (modprobe ublk_drv; needs CONFIG_BLK_DEV_UBLK, Linux 6.0 or later)"),
        ));
    }
    Ok(())
}

/// `--recover --ublk-id N`, before anything else (the keeper, the engine):
/// the device must exist and wait for a new server; a live one's server
/// runs, and recovering another export's store into it would be wrong.
pub fn check_recover_target(id: u32) -> io::Result<()> {
    if !exists(id) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("--recover --ublk-id {id}: there is no /dev/ublkb{id} to recover (the driver has no ublk device {id}: ls /sys/class/ublk-char)"),
        ));
    }
    match state(id) {
        Ok(sys::UBLK_S_DEV_LIVE) => Err(io::Error::other(format!(
            "--recover --ublk-id {id}: /dev/ublkb{id} is live (its server runs), not waiting for a new server"
        ))),
        _ => Ok(()),
    }
}

/// The control handle: a new device with its parameters accepted, or the
/// device a dead server left, checked to be waiting for a server of this
/// size.
fn control(dev_size: u64, o: &Options) -> io::Result<(UblkCtrl, bool)> {
    let features = UblkCtrl::get_features().unwrap_or(0);
    let recovery = recovery_flags(features);
    let id = o.id.map_or(-1, |i| i as i32);
    let b = UblkCtrlBuilder::default()
        .name("zmem")
        .id(id)
        .nr_queues(o.nr_queues())
        .depth(o.depth)
        .io_buf_bytes(IO_BUF_BYTES);
    if o.recover {
        check_recover_target(id as u32)?;
        let ctrl = b
            .dev_flags(UblkFlags::UBLK_DEV_F_RECOVER_DEV)
            .build()
            .map_err(|e| err(&format!("ublk device {id}"), e))?;
        check_recoverable(&ctrl, dev_size)?;
        ctrl.start_user_recover()
            .map_err(|e| err("START_USER_RECOVERY", e))?;
        return Ok((ctrl, true));
    }
    if let Some(why) = o.id.and_then(taken) {
        // Never ADD_DEV an id that exists: libublk deletes the id its failed
        // ADD_DEV asked for (DEL_DEV on drop), which is the other server's device.
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, why));
    }
    let ctrl = b
        .ctrl_flags(recovery)
        .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
        .build()
        .map_err(|e| match o.id {
            Some(n) => err(&format!("adding /dev/ublkb{n} (--ublk-id {n}: in use?)"), e),
            None => err("adding a ublk device", e),
        })?;
    // Dropped on error: DEL_DEV, before any queue holds the device.
    ctrl.set_params(&params(dev_size, IO_BUF_BYTES))
        .map_err(|e| err("SET_PARAMS (the device's queue limits)", e))?;
    Ok((ctrl, recovery != 0))
}

/// Whether the driver has ublk device `n` (its char device `/dev/ublkcN` is registered).
fn exists(n: u32) -> bool {
    std::fs::metadata(format!("/sys/class/ublk-char/ublkc{n}")).is_ok()
}

/// The driver's state of ublk device `n` (`UBLK_S_DEV_*`).
fn state(n: u32) -> Result<u32, UblkError> {
    UblkCtrl::new_simple(n as i32).map(|c| c.dev_info().state as u32)
}

/// Why `--ublk-id n` cannot be added: the device exists (its char device
/// `/dev/ublkcN` is registered), served by another server or left by one
/// that died (then the way back). `None` when there is no such device.
fn taken(n: u32) -> Option<String> {
    if !exists(n) {
        return None;
    }
    let what = match state(n) {
        Ok(sys::UBLK_S_DEV_LIVE) => "exists and another server serves it".to_string(),
        Ok(sys::UBLK_S_DEV_QUIESCED) => format!(
            "was left by a server that died, its I/O queued: attach to it with \
             --recover --ublk-id {n} (and the dead server's --export and --size)"
        ),
        _ => "exists (another server's, starting or stopping)".to_string(),
    };
    Some(format!("--ublk-id {n}: /dev/ublkb{n} {what}"))
}

/// A device to recover: created with USER_RECOVERY, quiesced (its server
/// gone), and of the size the new server serves.
fn check_recoverable(ctrl: &UblkCtrl, dev_size: u64) -> io::Result<()> {
    let info = ctrl.dev_info();
    let id = info.dev_id;
    if info.flags & sys::UBLK_F_USER_RECOVERY as u64 == 0 {
        return Err(io::Error::other(format!(
            "/dev/ublkb{id} was not created with USER_RECOVERY: nothing to recover"
        )));
    }
    if info.state != sys::UBLK_S_DEV_QUIESCED as u16 {
        let what = match info.state as u32 {
            sys::UBLK_S_DEV_LIVE => "live (its server runs)",
            sys::UBLK_S_DEV_DEAD => "not started",
            _ => "failing its I/O",
        };
        return Err(io::Error::other(format!(
            "/dev/ublkb{id} is {what}, not waiting for a new server"
        )));
    }
    let mut p = sys::ublk_params {
        len: std::mem::size_of::<sys::ublk_params>() as u32,
        types: sys::UBLK_PARAM_TYPE_BASIC,
        ..Default::default()
    };
    ctrl.get_params(&mut p).map_err(|e| err("GET_PARAMS", e))?;
    let size = p.basic.dev_sectors << 9;
    if size != dev_size {
        return Err(io::Error::other(format!(
            "/dev/ublkb{id} holds {size} bytes; this server's device has {dev_size} (--size must match)"
        )));
    }
    Ok(())
}

/// Serve `dev` as a ublk block device until `stop` is set; `ready` runs once
/// the kernel serves it. Returns the failed requests by kind.
pub fn serve<R>(
    dev: Arc<dyn BlockDevice>,
    o: &Options,
    stop: Arc<AtomicBool>,
    ready: R,
) -> io::Result<FailureCounts>
where
    R: FnOnce(&Started) + Send + Sync + 'static,
{
    check_driver()?;
    o.check(dev.size()).map_err(io::Error::other)?;
    let (ctrl, recoverable) = control(dev.size(), o)?;
    // The device id once the kernel serves it (-1 before).
    let started = Arc::new(AtomicI64::new(-1));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch(stop, started.clone(), done.clone());
    let failures = Arc::new(Failures::default());
    let size = dev.size();
    let (f, recovered, depth) = (failures.clone(), o.recover, o.depth);
    let r = ctrl.run_target(
        |udev: &mut UblkDev| {
            udev.set_default_params(size);
            udev.tgt.params = params(size, IO_BUF_BYTES);
            Ok(())
        },
        move |qid, udev: &UblkDev| serve_queue(qid, udev, dev.as_ref(), &f),
        move |c: &UblkCtrl| {
            let info = c.dev_info();
            started.store(info.dev_id as i64, Ordering::SeqCst);
            ready(&Started {
                id: info.dev_id,
                path: c.get_bdev_path(),
                queues: info.nr_hw_queues,
                depth,
                recoverable,
                recovered,
            });
        },
    );
    done.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    delete(&ctrl);
    drop(ctrl);
    r.map_err(|e| err("starting the ublk device", e))?;
    Ok(failures.snapshot())
}

/// Deletes the device (also one recovered: not ours by ADD_DEV, its drop
/// would leave it). DEL_DEV waits until nobody holds `/dev/ublkbN` open (a
/// reader, a mount), so the server would hang on its stop; DEL_DEV_ASYNC
/// returns at once and the driver deletes the device when the last holder
/// closes it (its id stays taken until then). The waiting DEL_DEV only where
/// the driver lacks the async one.
fn delete(ctrl: &UblkCtrl) {
    if ctrl.del_dev_async().is_err() {
        let _ = ctrl.del_dev();
    }
}

/// Once the device is started and `stop` is set, STOP_DEV: every queue's
/// fetches end and `run_target` returns. Sent through a control handle of
/// this thread's own (libublk's control ring is per thread).
fn watch(
    stop: Arc<AtomicBool>,
    started: Arc<AtomicI64>,
    done: Arc<AtomicBool>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            let id = started.load(Ordering::SeqCst);
            if stop.load(Ordering::SeqCst) && id >= 0 {
                let r = UblkCtrl::new_simple(id as i32).and_then(|c| c.kill_dev());
                if let Err(e) = r {
                    eprintln!("zmem serve: stopping /dev/ublkb{id}: {e}");
                }
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
    })
}

/// One hardware queue: a buffer per tag, every tag fetched, then each
/// request run on the engine and committed (COMMIT_AND_FETCH) until the
/// queue is stopped.
fn serve_queue(qid: u16, udev: &UblkDev, dev: &dyn BlockDevice, failures: &Failures) {
    let mut bufs = udev.alloc_queue_io_bufs();
    let q = UblkQueue::new(qid, udev)
        .and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(Some(&bufs))));
    let q = match q {
        Ok(q) => q,
        Err(e) => {
            eprintln!("zmem serve: ublk queue {qid}: {e}");
            return;
        }
    };
    let size = dev.size();
    let max = udev.dev_info.max_io_buf_bytes;
    q.wait_and_handle_io(move |q: &UblkQueue, tag: u16, _: &UblkIOCtx| {
        let req = Request::from(q.get_iod(tag));
        let buf = bufs[tag as usize].as_mut_slice();
        let res = run(dev, failures, &req, size, max, buf);
        let desc = BufDesc::Slice(bufs[tag as usize].as_slice());
        if let Err(e) = q.complete_io_cmd_unified(tag, desc, Ok(UblkIORes::Result(res))) {
            eprintln!("zmem serve: ublk queue {qid}: committing tag {tag}: {e}");
        }
    });
}

/// One request on the engine: the bytes moved, or a negative errno.
fn run(
    dev: &dyn BlockDevice,
    failures: &Failures,
    req: &Request,
    size: u64,
    max: u32,
    buf: &mut [u8],
) -> i32 {
    let cmd = match command(req, size, max) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let n = data_bytes(&cmd);
    match execute_io(dev, &cmd, &mut buf[..n]) {
        Ok(()) => n as i32,
        Err(e) => {
            failures.count(&e);
            errno(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_device::IoError;

    /// A device of plain memory, to run requests on without the kernel.
    struct Mem(std::sync::Mutex<Vec<u8>>);

    impl BlockDevice for Mem {
        fn size(&self) -> u64 {
            self.0.lock().unwrap().len() as u64
        }
        fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<(), IoError> {
            let m = self.0.lock().unwrap();
            buf.copy_from_slice(&m[off as usize..off as usize + buf.len()]);
            Ok(())
        }
        fn write_at(&self, off: u64, buf: &[u8]) -> Result<(), IoError> {
            if buf[0] == 0xee {
                return Err(IoError::NoSpace("mem_limit".into()));
            }
            let mut m = self.0.lock().unwrap();
            m[off as usize..off as usize + buf.len()].copy_from_slice(buf);
            Ok(())
        }
        fn discard(&self, off: u64, len: u64) -> Result<(), IoError> {
            self.write_zeroes(off, len)
        }
        fn write_zeroes(&self, off: u64, len: u64) -> Result<(), IoError> {
            self.0.lock().unwrap()[off as usize..(off + len) as usize].fill(0);
            Ok(())
        }
        fn flush(&self) -> Result<(), IoError> {
            Ok(())
        }
        fn attr_read(&self, _: &str) -> Result<String, zmem_kernel::AttrError> {
            Ok(String::new())
        }
        fn attr_write(&self, _: &str, _: &str) -> Result<(), zmem_kernel::AttrError> {
            Ok(())
        }
        fn attr_names(&self) -> Vec<&'static str> {
            Vec::new()
        }
    }

    fn req(op: u32, sector: u64, sectors: u32) -> Request {
        Request {
            op_flags: op,
            start_sector: sector,
            nr_sectors: sectors,
        }
    }

    #[test]
    fn requests_reach_the_device_and_failures_are_counted() {
        let dev = Mem(std::sync::Mutex::new(vec![0; 1 << 16]));
        let f = Failures::default();
        let mut buf = vec![7u8; 8192];
        let w = req(sys::UBLK_IO_OP_WRITE, 8, 8);
        assert_eq!(run(&dev, &f, &w, 1 << 16, 8192, &mut buf), 4096);
        let mut back = vec![0u8; 8192];
        let r = req(sys::UBLK_IO_OP_READ, 8, 8);
        assert_eq!(run(&dev, &f, &r, 1 << 16, 8192, &mut back), 4096);
        assert_eq!(&back[..4096], &buf[..4096]);
        assert_eq!(back[4096], 0, "only the request's bytes are moved");
        let flush = req(sys::UBLK_IO_OP_FLUSH, 0, 0);
        assert_eq!(run(&dev, &f, &flush, 1 << 16, 8192, &mut back), 0);
        buf[0] = 0xee;
        assert_eq!(run(&dev, &f, &w, 1 << 16, 8192, &mut buf), -libc::ENOSPC);
        let past = req(sys::UBLK_IO_OP_READ, 128, 8);
        assert_eq!(
            run(&dev, &f, &past, 1 << 16, 8192, &mut back),
            -libc::EINVAL
        );
        let c = f.snapshot();
        assert_eq!((c.no_space, c.invalid, c.io), (1, 0, 0));
    }

    #[test]
    fn a_missing_driver_is_refused_with_the_fix() {
        if std::fs::metadata(CONTROL).is_ok() {
            return; // The driver is loaded here: nothing to refuse.
        }
        let e = check_driver().unwrap_err();
        assert!(e.to_string().contains("modprobe ublk_drv"), "{e}");
    }
}
