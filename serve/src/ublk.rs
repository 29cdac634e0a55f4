//! `zmem serve --ublk`: the engine device served as the kernel block device
//! `/dev/ublkbN` (zmem-ublk) instead of over NBD, with the same control
//! socket, maintenance and last words. Refused before anything is built
//! without root or without the kernel's ublk driver.

use std::sync::atomic::Ordering;

use anyhow::{bail, Context};

use crate::device::{build, Device};
use crate::run::{check_export, check_size, control_socket, report_stop, Spec};
use crate::safety::make_safe;

/// What is refused before the device is built: the mode, the export name,
/// the size and the queue options, then root and the driver.
fn preflight(s: &Spec, u: &zmem_ublk::Options) -> anyhow::Result<()> {
    if !matches!(s.engine.mode.as_str(), "zram" | "zswap") {
        bail!("--mode {:?}: expected zram or zswap", s.engine.mode);
    }
    check_export(&s.export)?;
    check_size(s.engine.size)?;
    if s.engine.size == 0 {
        bail!("--size 0: a ublk device needs at least one page");
    }
    // The engine's disksize is PAGE_ALIGNed, so only the options remain.
    let size = s.engine.size.div_ceil(zmem_ublk::BLOCK) * zmem_ublk::BLOCK;
    u.check(size).map_err(anyhow::Error::msg)?;
    if !zmem_host::euid_is_root() {
        bail!(
            "--ublk needs root: ublk devices are added through {} (root only)",
            zmem_ublk::CONTROL
        );
    }
    zmem_ublk::check_driver()?;
    Ok(())
}

/// Build the device and serve it as `/dev/ublkbN` until SIGINT, SIGTERM or
/// SIGHUP; then the ublk device is stopped and deleted.
pub(crate) fn run(s: Spec, u: zmem_ublk::Options) -> anyhow::Result<()> {
    preflight(&s, &u)?;
    // Before build: every thread started from here on (the queues' too) inherits IO_FLUSHER.
    let safety = make_safe(s.swap, s.engine.mem_limit).map_err(anyhow::Error::msg)?;
    let Device {
        zram,
        dev,
        maintained,
        claim: _claim,
    } = build(&s.engine, &format!("serve:{}", s.export))?;
    let _open = zram.as_ref().map(|z| z.open());
    let ctl = control_socket(&s, &dev)?;
    let stop = zmem_nbd::stop_on_signals().context("installing SIGINT/SIGTERM/SIGHUP handlers")?;
    let e = &s.engine;
    let ctl_note = ctl
        .as_ref()
        .map(|c| format!(", control socket {}", c.path().display()))
        .unwrap_or_default();
    eprintln!(
        "zmem serve: {} bytes, {} on {}, {} ublk queues of {} tags{ctl_note}",
        dev.size(),
        e.algo,
        e.allocator,
        u.nr_queues(),
        u.depth,
    );
    eprintln!("zmem serve: {}", safety.line);
    let failed = zmem_ublk::serve(dev.clone(), &u, stop.clone(), |st| {
        let how = match (st.recovered, st.recoverable) {
            (true, _) => "recovered (START/END_USER_RECOVERY)",
            (false, true) => "USER_RECOVERY: a dead server leaves it, I/O queued",
            (false, false) => "no USER_RECOVERY in this kernel's driver",
        };
        eprintln!("zmem serve: {} ready, {how}", st.path);
        println!("serving {}", st.path);
    })
    .context("--ublk")?;
    drop(ctl);
    if let Some(m) = &maintained {
        m.stop();
    }
    report_stop(dev.as_ref(), stop.load(Ordering::Relaxed));
    eprintln!("zmem serve: {failed}");
    Ok(())
}
