//! Serving: the listen address checked, the device built, its control socket
//! opened, NBD served until a signal, and the last words said.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use zmem_device::{AttrTarget, BlockDevice, DeviceTarget};
use zmem_kernel::attr;
use zmem_nbd::{Control, CtlServer, Limits, Listen, Listener, Options, Server, SocketPerms};

use crate::device::{build, within_cgroup, Device, EngineSpec};
use crate::keeper::{self, Link};
use crate::safety::{make_safe, SwapUse};

/// Everything `zmem serve` was asked for.
#[derive(Debug, Clone)]
pub struct Spec {
    pub engine: EngineSpec,
    /// Export name (clients may also ask for the default, empty, name).
    pub export: String,
    /// `unix:PATH` or `tcp:HOST:PORT`.
    pub listen: String,
    /// Control socket path (default `/run/zmem/EXPORT.ctl`).
    pub ctl: Option<PathBuf>,
    /// No control socket at all.
    pub no_ctl: bool,
    /// Whether the server must be, may be, or is not to be swap-safe.
    pub swap: SwapUse,
    /// Allow a non-loopback TCP address.
    pub allow_remote: bool,
    /// Allow TCP at all (any local user can connect to a TCP port).
    pub allow_tcp: bool,
    /// Threads per connection (default: the number of CPUs).
    pub threads: Option<usize>,
    /// Log connections on stderr.
    pub verbose: bool,
    /// Mode of the Unix sockets, octal.
    pub socket_mode: u32,
    /// Group of the Unix sockets: a name from /etc/group or a GID.
    pub socket_group: Option<String>,
    /// Per-connection bounds.
    pub limits: Limits,
    /// Serve as the kernel block device /dev/ublkbN instead of NBD (`listen` unused).
    pub ublk: Option<zmem_ublk::Options>,
    /// Whether the store is kept for crash recovery, or recovered.
    pub recovery: Recovery,
}

/// Crash recovery (docs/serve.md, "Crash recovery").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recovery {
    /// A keeper holds the store when the device can be recovered (zram,
    /// zsmalloc, no backing_dev); said on stderr when it cannot.
    #[default]
    Keep,
    /// `--no-recover-store`: no keeper, a crash loses the contents.
    Off,
    /// `--recover`: serve the store a dead server's keeper holds.
    Recover,
}

/// A group name from /etc/group, or a numeric GID.
fn group_id(g: &str) -> anyhow::Result<u32> {
    if let Ok(n) = g.parse::<u32>() {
        return Ok(n);
    }
    let groups = std::fs::read_to_string("/etc/group").context("reading /etc/group")?;
    groups
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            (f.next() == Some(g)).then(|| f.nth(1)?.parse().ok())?
        })
        .with_context(|| format!("--socket-group: no group {g:?} in /etc/group"))
}

/// The sockets' permissions from the flags.
fn socket_perms(s: &Spec) -> anyhow::Result<SocketPerms> {
    Ok(SocketPerms {
        mode: s.socket_mode,
        group: s.socket_group.as_deref().map(group_id).transpose()?,
    })
}

/// An export name is a name: 1 to 128 of `[A-Za-z0-9._-]`, not `.` or `..`
/// (it names the control socket under /run/zmem).
pub(crate) fn check_export(name: &str) -> anyhow::Result<()> {
    let ok = (1..=128).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !ok {
        bail!("--export {name:?}: an export name is 1 to 128 letters, digits, '.', '_' or '-' (not '.' or '..'); it names the control socket /run/zmem/EXPORT.ctl");
    }
    Ok(())
}

/// `--size`: at least one page; the kernel's disksize_store rounds up to a
/// page (memparse, then PAGE_ALIGN), said on stderr.
pub(crate) fn check_size(size: u64) -> anyhow::Result<()> {
    const PAGE: u64 = 4096;
    if size > 0 && size < PAGE {
        bail!("--size {size}: below one page ({PAGE} bytes); sizes are bytes with an optional K, M, G or T suffix (e.g. 64M)");
    }
    if !size.is_multiple_of(PAGE) {
        eprintln!(
            "zmem serve: --size {size} is not a multiple of the page size: rounded up to {} (PAGE_ALIGN, as the kernel's disksize)",
            size.div_ceil(PAGE) * PAGE
        );
    }
    Ok(())
}

/// The listen address, checked: TCP
/// only with `allow_tcp` (said on stderr: who can connect), and only on
/// loopback unless `allow_remote`.
fn listen_address(s: &Spec) -> anyhow::Result<Listen> {
    if !matches!(s.engine.mode.as_str(), "zram" | "zswap") {
        bail!("--mode {:?}: expected zram or zswap", s.engine.mode);
    }
    check_export(&s.export)?;
    check_size(s.engine.size)?;
    let listen = Listen::parse(&s.listen).map_err(|e| anyhow::anyhow!("--listen {e}"))?;
    match &listen {
        Listen::Tcp(addr) => {
            if !addr.ip().is_loopback() && !s.allow_remote {
                bail!("--listen {addr}: not a loopback address; NBD has no authentication here, pass --allow-remote to serve other hosts");
            }
            if !s.allow_tcp {
                bail!("--listen {addr}: on TCP any local user (and with --allow-remote any host that reaches it) can read and write the device: NBD has no authentication; serve on unix:PATH (guarded by --socket-mode) or pass --allow-tcp");
            }
            let who = if addr.ip().is_loopback() {
                "every local user"
            } else {
                "every host that reaches it and every local user"
            };
            eprintln!("zmem serve: TCP {addr}: {who} can read and write this device (NBD has no authentication)");
        }
        // Its directory must exist: checked when it is bound (nbd's bind_unix creates none).
        Listen::Unix(_) => {}
    }
    Ok(listen)
}

/// The control socket, listing every attribute the device has.
fn control_socket(s: &Spec, dev: &Arc<dyn BlockDevice>) -> anyhow::Result<Option<CtlServer>> {
    if s.no_ctl {
        return Ok(None);
    }
    let path = match &s.ctl {
        // Its directory as the keeper's: no other user may swap the socket.
        Some(p) => {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            zmem_files::trusted_dir(dir.unwrap_or(".".as_ref()))
                .with_context(|| format!("--ctl {}", p.display()))?;
            p.clone()
        }
        None => {
            // The one directory serve makes: /run/zmem, for its default sockets.
            zmem_files::shared_dir("/run/zmem".as_ref()).context("/run/zmem")?;
            PathBuf::from(format!("/run/zmem/{}.ctl", s.export))
        }
    };
    let names = DeviceTarget::new("", dev.clone())
        .list_attrs()
        .unwrap_or_default();
    let server = CtlServer::start(
        &path,
        Control {
            dev: dev.clone(),
            names,
        },
        socket_perms(s)?,
    )
    .with_context(|| format!("control socket {}", path.display()))?;
    Ok(Some(server))
}

/// The last words: why serving stopped and the device's final statistics
/// (zram's mm_stat; zswap's pool size and stored pages).
fn report_stop(dev: &dyn BlockDevice, by_signal: bool) {
    let final_stats: Vec<String> = [attr::MM_STAT, "pool_total_size", "stored_pages"]
        .iter()
        .filter_map(|n| {
            dev.attr_read(n)
                .ok()
                .map(|v| format!("{n}: {}", v.trim_end()))
        })
        .collect();
    let why = if by_signal { "signal" } else { "done" };
    eprintln!(
        "zmem serve: stopped ({why}); final {}",
        final_stats.join(", ")
    );
}

/// What a transport is handed once the device is built and its control
/// socket open: the device, the engine's zram (when it is one), the stop
/// flag the signals set, and the words for its start-up line.
pub(crate) struct Serving<'a> {
    pub dev: &'a Arc<dyn BlockDevice>,
    pub zram: Option<&'a zmem_zram::Zram>,
    pub stop: &'a Arc<AtomicBool>,
    /// `, control socket PATH`, or empty without one.
    pub ctl_note: String,
    /// Whether the server is safe as swap, in words (said before it serves).
    pub safety_line: &'a str,
}

/// The life of a served device, the same for every transport: made safe as
/// swap (before any thread starts, so every thread inherits IO_FLUSHER), the
/// device built and held open (`reset` answers EBUSY, as the kernel's does
/// for a mounted or swapped-on zram), its control socket opened, the
/// signal handlers installed; then `transport` serves it until a signal,
/// and the maintenance is stopped and the last words said.
pub(crate) fn serve_device(
    s: &Spec,
    transport: impl FnOnce(&Serving) -> anyhow::Result<zmem_nbd::FailureCounts>,
) -> anyhow::Result<()> {
    let limit = zmem_host::own_memory_limit(&zmem_host::Sys::real());
    let (engine, cgroup_line) = within_cgroup(&s.engine, limit);
    if let Some(line) = cgroup_line {
        eprintln!("{line}");
    }
    let safety = make_safe(s.swap, engine.mem_limit).map_err(anyhow::Error::msg)?;
    let (link, old) = keeper_for(s)?;
    let Device {
        zram,
        dev,
        maintained,
        claim: _claim,
    } = build(&engine, &format!("serve:{}", s.export), link.is_some())?;
    let _open = zram.as_ref().map(|z| z.open());
    let stopping = Arc::new(AtomicBool::new(false));
    let _kept = match (&link, zram.as_deref()) {
        (Some(l), Some(z)) => Some(keep_store(s, l, z, old, &stopping)?),
        _ => None,
    };
    let ctl = control_socket(s, &dev)?;
    let stop = zmem_nbd::stop_on_signals().context("installing SIGINT/SIGTERM/SIGHUP handlers")?;
    let ctl_note = ctl
        .as_ref()
        .map(|c| format!(", control socket {}", c.path().display()))
        .unwrap_or_default();
    let serving = Serving {
        dev: &dev,
        zram: zram.as_deref(),
        stop: &stop,
        ctl_note,
        safety_line: &safety.line,
    };
    let failed = transport(&serving)?;
    drop(ctl);
    if let Some(m) = &maintained {
        m.stop();
    }
    report_stop(dev.as_ref(), stop.load(Ordering::Relaxed));
    eprintln!("zmem serve: {failed}");
    Ok(())
}

/// Why the device cannot be recovered after a crash, if it cannot.
fn not_recoverable(e: &EngineSpec) -> Option<&'static str> {
    if e.mode != "zram" {
        Some("--mode zswap keeps no store")
    } else if e.allocator.trim() != "zsmalloc" {
        Some("only a zsmalloc pool is kept (recovery finds objects by address)")
    } else if e.backing_dev.is_some() {
        Some("a device with --backing-dev is not kept (its written-back blocks are not)")
    } else {
        None
    }
}

/// The keeper's socket: in the control socket's directory (`/run/zmem`
/// without `--ctl`, also with `--no-ctl`), absolute; the directory and every
/// one above it checked (`zmem_files::trusted_dir`: no other user could put
/// a socket of theirs there), links followed only when root's or yours.
fn keep_path(s: &Spec) -> anyhow::Result<PathBuf> {
    let dir = match s.ctl.as_ref().and_then(|c| c.parent()) {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        Some(_) => PathBuf::from("."),
        None => {
            zmem_files::shared_dir("/run/zmem".as_ref()).context("/run/zmem")?;
            PathBuf::from("/run/zmem")
        }
    };
    let dir = zmem_files::trusted_dir(&dir)
        .with_context(|| format!("the keeper's directory {}", dir.display()))?;
    Ok(keeper::path(&dir, &s.export))
}

/// The keeper (forked now, before any thread starts) and, with
/// `--recover`, the dead server's store it held.
fn keeper_for(s: &Spec) -> anyhow::Result<(Option<Link>, Option<zmem_zram::Store>)> {
    let why = not_recoverable(&s.engine);
    match (s.recovery, why) {
        (Recovery::Off, _) => Ok((None, None)),
        (Recovery::Keep, Some(why)) => {
            eprintln!("zmem serve: not recoverable after a crash: {why}");
            Ok((None, None))
        }
        (Recovery::Recover, Some(why)) => bail!("--recover: {why}"),
        (Recovery::Keep, None) => match keep_path(s) {
            Ok(p) => Ok((Link::spawn(&p)?, None)),
            Err(e) => {
                eprintln!("zmem serve: not recoverable after a crash: {e:#}");
                Ok((None, None))
            }
        },
        (Recovery::Recover, None) => {
            let (l, st) = keeper::take(&keep_path(s)?, &s.engine)?;
            Ok((Some(l), Some(st)))
        }
    }
}

/// Ends the keeper when the server stops (not when it panics: a crash
/// leaves the store to `--recover`).
struct Kept<'a>(&'a Link, Arc<AtomicBool>);

impl Drop for Kept<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.1.store(true, Ordering::Relaxed);
            self.0.end();
        }
    }
}

/// With `--recover`, the dead server's store copied into `z`; then `z`'s
/// store handed to the keeper (replacing the old one only now, complete).
fn keep_store<'a>(
    s: &Spec,
    link: &'a Link,
    z: &zmem_zram::Zram,
    old: Option<zmem_zram::Store>,
    stopping: &Arc<AtomicBool>,
) -> anyhow::Result<Kept<'a>> {
    if let Some(old) = old {
        let r = z
            .recover_from(old)
            .map_err(anyhow::Error::msg)
            .context("--recover")?;
        eprintln!(
            "zmem serve: recovered {} pages ({} objects copied, {} slots rolled back to their acknowledged contents, {} lost)",
            r.pages, r.objects, r.rolled_back, r.lost
        );
    }
    let store = z.shared_store().context("the device's store")?;
    test_kill_keeper(link);
    if let Err(e) = link.put(&s.engine, &store) {
        // Recovered or not, the device is served: exiting now would lose it.
        eprintln!("zmem serve: the keeper (pid {}) did not take the store: {e:#}; still serving, but a crash of this server now loses the device's contents (restart it cleanly to be recoverable again)", link.pid());
        return Ok(Kept(link, stopping.clone()));
    }
    link.watch(stopping.clone())?;
    eprintln!(
        "zmem serve: recoverable: the keeper (pid {}) holds the store; after a crash, `zmem serve --recover` with the same options serves it again",
        link.pid()
    );
    Ok(Kept(link, stopping.clone()))
}

/// Test-only: with `ZMEM_TEST_KILL_KEEPER=1`, the keeper is killed right
/// before the store is handed to it (the moment of hostile finding 6:
/// cli/tests/hostile_keeper.rs). Unset, one environment lookup.
fn test_kill_keeper(link: &Link) {
    if std::env::var_os("ZMEM_TEST_KILL_KEEPER").is_some_and(|v| v == "1") {
        link.kill_for_test();
    }
}

/// Build the device and serve it over NBD until SIGINT, SIGTERM or SIGHUP.
pub fn run(s: Spec) -> anyhow::Result<()> {
    let listen = listen_address(&s)?;
    serve_device(&s, |v| {
        let listener = Listener::bind(&listen, socket_perms(&s)?)
            .with_context(|| format!("--listen {listen}"))?;
        let mut opts = Options {
            export_name: s.export.clone(),
            verbose: s.verbose,
            limits: s.limits.clone(),
            ..Options::default()
        };
        if let Some(t) = s.threads {
            opts.threads = t.clamp(1, 256);
        }
        let e = &s.engine;
        let fast = e
            .fast
            .as_ref()
            .map(|f| format!(" (fast path {f}, {})", e.fast_when))
            .unwrap_or_default();
        let kernel = v
            .zram
            .map(|z| format!(", as kernel {}'s zram", z.kernel()))
            .unwrap_or_default();
        eprintln!(
            "zmem serve: export {:?}: {} bytes, {}{fast} on {}{kernel}, {} threads per connection{}",
            s.export,
            v.dev.size(),
            e.algo,
            e.allocator,
            opts.threads,
            v.ctl_note,
        );
        eprintln!("zmem serve: {}", v.safety_line);
        println!("listening on {}", listener.local());
        let server = Server::new(v.dev.clone(), listener, opts);
        server.run(v.stop).context("serving")
    })
}
