//! Crash recovery for `zmem serve`: a keeper process holds the recoverable
//! device's store (`hold.rs`) on the socket `EXPORT.keep` (`wire.rs`), and
//! this side of it: the keeper forked and handed the store, the store taken
//! back by `zmem serve --recover` after comparing the options it was saved
//! with, and the clean stop that ends the keeper (docs/serve.md, "Crash
//! recovery").
//!
//! Why a fork and not `zmem` executed again: the keeper runs the same code
//! and needs nothing of a new image; forked before any thread starts (right
//! after the process is made safe as swap, before the device is built), the
//! child is a single-threaded copy in which any call is safe, it never
//! sees the device's memory (not allocated yet), and it inherits no
//! memory lock (mlockall is not inherited across fork). It keeps
//! PR_SET_IO_FLUSHER, which only makes its few allocations `GFP_NOIO`.

mod hold;
mod wire;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use zmem_kernel::attr;
use zmem_zram::Store;

use wire::Msg;

/// The options a store was written with, as `key value` pairs, each with the
/// flag that sets it: a store is recovered only by a server with the same.
pub(crate) fn fingerprint(e: &crate::EngineSpec) -> Vec<(&'static str, &'static str, String)> {
    let page = 4096u64;
    vec![
        (
            attr::DISKSIZE,
            "--size",
            (e.size.div_ceil(page) * page).to_string(),
        ),
        ("algorithm", "--algo", e.algo.clone()),
        ("params", "--params", e.params.clone().unwrap_or_default()),
        ("recomp", "--recomp", e.recomp.join(",")),
        ("fast", "--fast", e.fast.clone().unwrap_or_default()),
        (attr::ALLOCATOR, "--allocator", e.allocator.clone()),
        (
            "kernel",
            "--kernel",
            e.kernel.unwrap_or_default().to_string(),
        ),
    ]
}

/// The socket of `export`'s keeper: in the control socket's directory.
pub(crate) fn path(ctl_dir: &Path, export: &str) -> PathBuf {
    ctl_dir.join(format!("{export}.keep"))
}

/// The server's link to its keeper.
pub(crate) struct Link {
    path: PathBuf,
    pid: i32,
    pidfd: OwnedFd,
    /// Whether this process forked it (and so reaps it).
    child: bool,
}

/// Connected to the keeper at `path`, once it is known to be one that only
/// this user or root runs: the socket file is checked before (a socket of
/// this user or root, writable by no one else, in directories no other user
/// can change: `zmem_files::trusted_file`), and the peer after
/// (`SO_PEERCRED`: this user's or root's process, alive). Anyone else could
/// bind the path first and be handed a store, or hand one.
fn connect(path: &Path) -> anyhow::Result<OwnedFd> {
    zmem_files::trusted_file(path, zmem_files::Kind::Socket)
        .context("the keeper's socket is not trusted")?;
    let c = wire::connect(path)
        .with_context(|| format!("connecting to the keeper {}", path.display()))?;
    check_peer(c.as_fd(), path)?;
    Ok(c)
}

/// The process at the other end of `c` runs as this user or root, and is alive.
fn check_peer(c: std::os::fd::BorrowedFd<'_>, path: &Path) -> anyhow::Result<()> {
    let (pid, uid) = wire::peer(c).context("the keeper's credentials (SO_PEERCRED)")?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if uid != me && uid != 0 {
        bail!(
            "{}: the process answering (pid {pid}) runs as uid {uid}, not as you (uid {me}) or root; zmem does not trust it",
            path.display()
        );
    }
    let alive = wire::pidfd(pid).is_ok_and(|fd| !wire::exited(fd.as_fd()));
    if !alive {
        bail!(
            "{}: the process answering (pid {pid}) is gone",
            path.display()
        );
    }
    Ok(())
}

/// What `INFO` says of a keeper that answers at `path`; `None`: no keeper
/// (a socket left by one is removed). A keeper that is exiting (its
/// connection reset) is waited for, a second at most. A socket zmem does
/// not trust (see [`connect`]) is an error, left where it is.
fn info(path: &Path) -> anyhow::Result<Option<Msg>> {
    for _ in 0..10 {
        match zmem_files::trusted_file(path, zmem_files::Kind::Socket) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).context("the keeper's socket is not trusted"),
            Ok(_) => {}
        }
        let Ok(c) = wire::connect(path) else {
            std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
            return Ok(None);
        };
        check_peer(c.as_fd(), path)?;
        let asked = wire::send(c.as_fd(), &Msg::new("INFO"), &[]);
        match asked.and_then(|_| wire::recv(c.as_fd())) {
            Ok((m, _)) if m.verb == "OK" => return Ok(Some(m)),
            Ok((m, _)) => bail!(
                "the keeper {}: {}",
                path.display(),
                m.get("why").unwrap_or("refused")
            ),
            Err(_) => {}
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bail!("the keeper at {} does not answer", path.display())
}

/// One request to the keeper at `path` and its reply (an `ERR` as an error).
fn ask(
    path: &Path,
    m: &Msg,
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> anyhow::Result<(Msg, Vec<OwnedFd>)> {
    let c = connect(path)?;
    wire::send(c.as_fd(), m, fds).context("writing to the keeper")?;
    let (r, fds) = wire::recv(c.as_fd()).context("reading the keeper's answer")?;
    if r.verb != "OK" {
        bail!(
            "the keeper {}: {}",
            path.display(),
            r.get("why").unwrap_or("refused")
        );
    }
    Ok((r, fds))
}

impl Link {
    /// Fork the keeper, listening at `path`. Refused while a keeper there
    /// holds the store of a server that died (`--recover` serves it); `None`
    /// (said on stderr) while a keeper there serves a running server (the
    /// same export in the same directory: this one is not kept).
    pub fn spawn(path: &Path) -> anyhow::Result<Option<Link>> {
        for _ in 0..10 {
            let i = match info(path) {
                Ok(Some(i)) => i,
                Ok(None) => break,
                Err(e) => {
                    eprintln!("zmem serve: not recoverable after a crash: {e:#}");
                    return Ok(None);
                }
            };
            let owner = i.get("owner_pid").unwrap_or("?");
            match (i.get("owner_alive"), i.get("held")) {
                (Some("true"), _) => {
                    eprintln!("zmem serve: not recoverable after a crash: {} is the keeper of the running server pid {owner} (the same export in the same directory)", path.display());
                    return Ok(None);
                }
                (_, Some("true")) => bail!(
                    "{} holds the store of a server (pid {owner}) that died: `zmem serve --recover` with the same options serves it again; `kill {}` (the keeper) frees it",
                    path.display(),
                    i.get("keeper_pid").unwrap_or("?"),
                ),
                // A keeper whose server died before it had a store: exiting.
                _ => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        let threads = std::fs::read_dir("/proc/self/task")
            .map(|d| d.count())
            .unwrap_or(0);
        if threads != 1 {
            eprintln!("zmem serve: not recoverable after a crash: the keeper is forked before any thread starts, and {threads} threads run");
            return Ok(None);
        }
        let listen = match wire::listen(path) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                eprintln!("zmem serve: not recoverable after a crash: {} was just taken by another server's keeper (the same export in the same directory)", path.display());
                return Ok(None);
            }
            Err(e) => {
                eprintln!(
                    "zmem serve: not recoverable after a crash: the keeper's socket {}: {e}",
                    path.display()
                );
                return Ok(None);
            }
            Ok(l) => l,
        };
        let parent = std::process::id() as i32;
        // SAFETY: this process has one thread (checked above), so the child
        // is a whole copy; it runs only hold::run, which never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork of the keeper: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            let l = hold::detach(listen).unwrap_or_else(|_| {
                // SAFETY: the forked child gives up at once.
                unsafe { libc::_exit(1) }
            });
            hold::run(l, path, parent);
        }
        drop(listen);
        Ok(Some(Link {
            path: path.to_path_buf(),
            pid,
            pidfd: wire::pidfd(pid).context("pidfd of the keeper")?,
            child: true,
        }))
    }

    /// Hand the keeper this server's store and the options it was built with.
    pub fn put(&self, spec: &crate::EngineSpec, store: &Store) -> anyhow::Result<()> {
        let mut m = Msg::new("PUT");
        for (k, _, v) in fingerprint(spec) {
            m = m.with(k, v);
        }
        m = m
            .with("zspages_base", store.zspages_base)
            .with("nr_pages", store.nr_pages)
            .with("server_pid", std::process::id());
        ask(
            &self.path,
            &m,
            &[store.table.as_fd(), store.zspages.as_fd()],
        )?;
        Ok(())
    }

    /// A clean stop: the keeper exits and the store is freed.
    pub fn end(&self) {
        if wire::exited(self.pidfd.as_fd()) {
            return; // said by `watch` when it happened
        }
        if let Err(e) = ask(&self.path, &Msg::new("END"), &[]) {
            eprintln!(
                "zmem serve: the keeper (pid {}) did not take the stop: {e:#}",
                self.pid
            );
        }
        if self.child {
            let _ = wire::poll(&[self.pidfd.as_fd()], 5000);
            // SAFETY: waitpid on our own child, without blocking.
            unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }

    /// Say on stderr if the keeper dies while this server runs (the store
    /// is then gone: still served, no longer recoverable). A thread.
    pub fn watch(&self, stopping: Arc<AtomicBool>) -> anyhow::Result<()> {
        let fd = self.pidfd.try_clone()?;
        let (pid, child) = (self.pid, self.child);
        std::thread::Builder::new()
            .name("zmem-keeper-watch".into())
            .spawn(move || {
                if wire::poll(&[fd.as_fd()], -1).is_ok() && !stopping.load(Ordering::Relaxed) {
                    eprintln!("zmem serve: the keeper (pid {pid}) exited: the store is gone; still serving, but a crash of this server now loses the device's contents");
                    if child {
                        // SAFETY: waitpid on our own child that has exited.
                        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
                    }
                }
            })?;
        Ok(())
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Test-only (`ZMEM_TEST_KILL_KEEPER`): SIGKILL the keeper and wait until it is gone.
    pub fn kill_for_test(&self) {
        // SAFETY: pidfd_send_signal on our pidfd of the keeper; no memory is passed.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        let _ = wire::poll(&[self.pidfd.as_fd()], 5000);
    }
}

/// `--recover`: the store of the dead server from the keeper at `path`,
/// refused when there is none, when its server still runs, or when `spec`
/// differs from the options it was saved with (the option named).
pub(crate) fn take(path: &Path, spec: &crate::EngineSpec) -> anyhow::Result<(Link, Store)> {
    if info(path)?.is_none() {
        bail!("--recover: nothing to recover: no keeper at {} (the server stopped cleanly, was started with --no-recover-store, or its keeper died)", path.display());
    }
    let (h, mut fds) = ask(path, &Msg::new("GET"), &[]).context("--recover")?;
    for (k, flag, want) in fingerprint(spec) {
        let had = h.get(k).unwrap_or_default();
        if had != want {
            bail!("--recover: {flag} differs: the saved store was written with {k} {had:?}, this server asks for {want:?}; serve with the dead server's options");
        }
    }
    let num = |k: &str| -> anyhow::Result<u64> {
        h.get(k)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("the keeper's header has no {k}"))
    };
    if fds.len() != 2 {
        bail!("the keeper sent {} descriptors, not 2", fds.len());
    }
    let zspages = fds.pop().unwrap();
    let table = fds.pop().unwrap();
    let store = Store {
        table,
        zspages,
        zspages_base: num("zspages_base")?,
        nr_pages: num("nr_pages")?,
    };
    let pid = num("keeper_pid")? as i32;
    let link = Link {
        path: path.to_path_buf(),
        pid,
        pidfd: wire::pidfd(pid).context("pidfd of the keeper")?,
        child: false,
    };
    eprintln!(
        "zmem serve: --recover: the store of server pid {} from the keeper (pid {pid})",
        h.get("server_pid").unwrap_or("?")
    );
    Ok((link, store))
}
