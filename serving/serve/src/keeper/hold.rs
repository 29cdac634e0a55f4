//! The keeper process itself: forked by `zmem serve` before any thread
//! starts, it holds a recoverable device's store (the two memfds of
//! `zmem_zram::Store`) so that the store outlives a server that dies, and
//! answers one request at a time on its socket `EXPORT.keep`:
//!
//! * `PUT` (a header and the two memfds): the server's store. Taken from the
//!   process the store belongs to (the forking server, or the server that
//!   recovered it), or from anyone once that process is dead; a recovering
//!   server sends it only after its recovery is complete, so the old store
//!   is replaced by a whole one.
//! * `GET`: the header and the memfds, only when the process the store
//!   belongs to is dead; the asker then owns it (a second recovery waits
//!   until the first one's process is dead too).
//! * `INFO`: who holds what (no descriptors).
//! * `END`: a clean stop; the keeper removes its socket and exits, and the
//!   memory is freed with the last descriptor.
//!
//! Only a peer of the keeper's own uid is answered (`SO_PEERCRED`). The
//! keeper exits by itself when the server that forked it dies before it
//! sent a store, and when its socket file is removed or replaced (no one
//! could ask for the store any more; it looks once a second). It holds nothing else: every other descriptor is closed,
//! its standard streams are /dev/null, its directory is `/`, and it runs
//! in a session of its own (a terminal's ^C or hangup is not for it).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use super::wire::{self, Msg};

/// The process a store belongs to: its pid and pidfd.
struct Owner {
    pid: i32,
    fd: OwnedFd,
}

impl Owner {
    fn of(pid: i32) -> Option<Owner> {
        wire::pidfd(pid).ok().map(|fd| Owner { pid, fd })
    }
    fn alive(&self) -> bool {
        !wire::exited(self.fd.as_fd())
    }
}

struct Keeper {
    listen: OwnedFd,
    uid: u32,
    /// The header and the two memfds (table, zspages).
    held: Option<(Msg, Vec<OwnedFd>)>,
    owner: Option<Owner>,
}

/// The keeper's life after the fork: serve requests until `END`, or until
/// the forking server dies without having sent a store; then remove the
/// socket and `_exit`.
pub(crate) fn run(listen: OwnedFd, path: &Path, parent: i32) -> ! {
    let at = identity(path);
    if wire::relisten(listen.as_fd()).is_err() {
        // SAFETY: _exit ends this (single-threaded, forked) process at once.
        unsafe { libc::_exit(1) }
    }
    let mut k = Keeper {
        listen,
        // SAFETY: geteuid has no preconditions.
        uid: unsafe { libc::geteuid() },
        held: None,
        owner: Owner::of(parent),
    };
    loop {
        let owner_alive = k.owner.as_ref().is_some_and(Owner::alive);
        if k.held.is_none() && !owner_alive {
            break; // the server died (or failed) before it had a store
        }
        let mut watch = vec![k.listen.as_fd()];
        if let Some(o) = k.owner.as_ref().filter(|_| owner_alive) {
            watch.push(o.fd.as_fd());
        }
        let Ok(ready) = wire::poll(&watch, LOOK_MS) else {
            break;
        };
        if !reachable(path, at) {
            break; // no one can ask for the store any more
        }
        if !ready[0] {
            continue; // the owner exited (looked at above), or time to look again
        }
        let Ok(conn) = wire::accept(k.listen.as_fd()) else {
            continue;
        };
        if let Ok(true) = k.answer(conn.as_fd()) {
            break;
        }
    }
    if reachable(path, at) {
        let _ = std::fs::remove_file(path);
    }
    // SAFETY: _exit ends this (single-threaded, forked) process at once.
    unsafe { libc::_exit(0) }
}

/// How often the keeper looks whether its socket is still there (ms).
const LOOK_MS: i32 = 1000;

/// The (device, inode) of the socket file at `path`.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Whether `path` is still the socket the keeper bound: one removed (its
/// directory cleaned up) or replaced leaves a keeper no one can reach, and
/// it exits, freeing the store.
fn reachable(path: &Path, at: Option<(u64, u64)>) -> bool {
    at.is_some() && identity(path) == at
}

fn err(conn: BorrowedFd<'_>, why: String) -> io::Result<bool> {
    wire::send(conn, &Msg::new("ERR").with("why", why), &[])?;
    Ok(false)
}

impl Keeper {
    /// One request; `Ok(true)`: `END`, stop.
    fn answer(&mut self, conn: BorrowedFd<'_>) -> io::Result<bool> {
        let (pid, uid) = wire::peer(conn)?;
        // Read the request before any answer, also one refused: closing a
        // socket with an unread message resets the connection, and the
        // client would see that instead of why.
        let (m, fds) = wire::recv(conn)?;
        if uid != self.uid {
            drop(fds);
            return err(
                conn,
                format!("uid {uid} may not use the keeper of uid {}", self.uid),
            );
        }
        let owner = self.owner.as_ref().filter(|o| o.alive()).map(|o| o.pid);
        let foreign = owner.filter(|&o| o != pid);
        match m.verb.as_str() {
            "PUT" if fds.len() != 2 => err(conn, "PUT carries two memfds".into()),
            "PUT" | "END" if foreign.is_some() => err(
                conn,
                format!(
                    "the store belongs to the running server pid {}",
                    owner.unwrap_or(0)
                ),
            ),
            "PUT" => {
                self.held = Some((
                    Msg {
                        verb: "STORE".into(),
                        ..m
                    },
                    fds,
                ));
                self.owner = Owner::of(pid);
                wire::send(conn, &Msg::new("OK"), &[])?;
                Ok(false)
            }
            "GET" => self.give(conn, pid, owner),
            "INFO" => {
                let r = Msg::new("OK")
                    // SAFETY: getpid has no preconditions.
                    .with("keeper_pid", unsafe { libc::getpid() })
                    .with("held", self.held.is_some())
                    .with("owner_pid", self.owner.as_ref().map_or(0, |o| o.pid))
                    .with("owner_alive", owner.is_some());
                wire::send(conn, &r, &[])?;
                Ok(false)
            }
            "END" => {
                wire::send(conn, &Msg::new("OK"), &[])?;
                Ok(true)
            }
            v => err(conn, format!("unknown request {v:?}")),
        }
    }

    /// `GET`: the store to a recovering server, which then owns it.
    fn give(&mut self, conn: BorrowedFd<'_>, pid: i32, owner: Option<i32>) -> io::Result<bool> {
        let Some((h, fds)) = &self.held else {
            return err(conn, "nothing to recover: no store was saved".into());
        };
        if let Some(o) = owner {
            return err(conn, format!("the server that owns the store (pid {o}) is still running; stop it (or wait for it to exit) first"));
        }
        let mut r = h.clone();
        r.verb = "OK".into();
        // SAFETY: getpid has no preconditions.
        let r = r.with("keeper_pid", unsafe { libc::getpid() });
        wire::send(conn, &r, &[fds[0].as_fd(), fds[1].as_fd()])?;
        self.owner = Owner::of(pid);
        Ok(false)
    }
}

/// Close every descriptor but `keep` (moved to 3) and 0..2 (made
/// /dev/null); `chdir /`; a session of its own. Returns `keep`'s new fd.
pub(crate) fn detach(keep: OwnedFd) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: in the forked child only: dup2 onto 3 and close_range above
    // it touch only this process's descriptor table; no other thread exists.
    unsafe {
        if keep.as_raw_fd() != 3 && libc::dup2(keep.as_raw_fd(), 3) < 0 {
            return Err(io::Error::last_os_error());
        }
        std::mem::forget(keep); // closed by close_range unless it is 3
        libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 3 {
                libc::close(null);
            }
        }
        libc::chdir(c"/".as_ptr());
        libc::setsid();
        libc::prctl(libc::PR_SET_NAME, c"zmem-keeper".as_ptr(), 0, 0, 0);
        Ok(OwnedFd::from_raw_fd(3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    fn pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: socketpair fills two new descriptors into `fds`.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0, "{}", io::Error::last_os_error());
        // SAFETY: two new descriptors, owned by nothing else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// Hostile finding 14: a client of another uid reads the keeper's
    /// refusal, not "Connection reset by peer".
    #[test]
    fn another_uid_reads_why_it_is_refused() {
        let (client, conn) = pair();
        let (listen, _other) = pair();
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let mut k = Keeper {
            listen,
            uid: me.wrapping_add(1),
            held: None,
            owner: None,
        };
        wire::send(client.as_fd(), &Msg::new("GET"), &[]).unwrap();
        assert!(!k.answer(conn.as_fd()).unwrap());
        drop(conn); // the keeper closes the connection after answering
        let (m, _) = wire::recv(client.as_fd()).expect("the keeper's answer");
        assert_eq!(m.verb, "ERR");
        let why = m.get("why").unwrap();
        assert!(
            why.contains(&format!("uid {me} may not use the keeper")),
            "{why}"
        );
    }
}
