//! `zmem serve --ublk`: the engine device served as the kernel block device
//! `/dev/ublkbN` (zmem-ublk) instead of over NBD, with the same control
//! socket, maintenance and last words. Refused before anything is built
//! without root or without the kernel's ublk driver.

use anyhow::{bail, Context};

use crate::run::{check_export, check_size, serve_device, Spec};

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
    if !zmem_files::euid_is_root() {
        bail!(
            "--ublk needs root: ublk devices are added through {} (root only)",
            zmem_ublk::CONTROL
        );
    }
    zmem_ublk::check_driver()?;
    if let (true, Some(id)) = (u.recover, u.id) {
        zmem_ublk::check_recover_target(id)?;
    }
    Ok(())
}

/// Build the device and serve it as `/dev/ublkbN` until SIGINT, SIGTERM or
/// SIGHUP; then the ublk device is stopped and deleted.
pub(crate) fn run(s: Spec, u: zmem_ublk::Options) -> anyhow::Result<()> {
    preflight(&s, &u)?;
    serve_device(&s, |v| {
        let e = &s.engine;
        eprintln!(
            "zmem serve: {} bytes, {} on {}, {} ublk queues of {} tags{}",
            v.dev.size(),
            e.algo,
            e.allocator,
            u.nr_queues(),
            u.depth,
            v.ctl_note,
        );
        eprintln!("zmem serve: {}", v.safety_line);
        zmem_ublk::serve(v.dev.clone(), &u, v.stop.clone(), |st| {
            let how = match (st.recovered, st.recoverable) {
                (true, _) => "recovered (START/END_USER_RECOVERY)",
                (false, true) => "USER_RECOVERY: a dead server leaves it, I/O queued",
                (false, false) => "no USER_RECOVERY in this kernel's driver",
            };
            eprintln!("zmem serve: {} ready, {how}", st.path);
            println!("serving {}", st.path);
        })
        .context("--ublk")
    })
}
