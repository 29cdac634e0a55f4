//! A connected socket (Unix or TCP) and a listener for either, with the few
//! operations the server needs.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where to listen: `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl Listen {
    /// Parse `unix:PATH` or `tcp:HOST:PORT` (HOST may be a name; the first
    /// address it resolves to is used; `[::1]:PORT` for IPv6).
    pub fn parse(s: &str) -> Result<Listen, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err("unix: needs a socket path".into());
            }
            return Ok(Listen::Unix(PathBuf::from(p)));
        }
        if let Some(hp) = s.strip_prefix("tcp:") {
            use std::net::ToSocketAddrs;
            let addr = hp
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {hp:?} (want HOST:PORT): {e}"))?
                .next()
                .ok_or_else(|| format!("{hp:?} resolves to no address"))?;
            return Ok(Listen::Tcp(addr));
        }
        Err(format!("{s:?}: expected unix:PATH or tcp:HOST:PORT"))
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
            Listen::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// A connected client.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tcp(s) => s.shutdown(how),
        }
    }
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
    /// A name for log lines.
    /// Who is connected, for per-client limits: a Unix peer's user
    /// (`SO_PEERCRED`), a TCP peer's address without its port.
    pub fn client(&self) -> String {
        match self {
            Stream::Unix(s) => {
                use std::os::fd::AsRawFd;
                let mut cred = libc::ucred {
                    pid: 0,
                    uid: 0,
                    gid: 0,
                };
                let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
                // SAFETY: getsockopt writes at most `len` bytes into `cred`,
                // which lives across the call; the descriptor is borrowed.
                let r = unsafe {
                    libc::getsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_PEERCRED,
                        (&mut cred as *mut libc::ucred).cast(),
                        &mut len,
                    )
                };
                if r == 0 {
                    format!("uid {}", cred.uid)
                } else {
                    "unix client".into()
                }
            }
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_else(|_| "tcp client".into()),
        }
    }

    pub fn peer(&self) -> String {
        match self {
            Stream::Unix(_) => "unix client".into(),
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| "tcp client".into()),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A listening socket; accept is non-blocking so the accept loop can notice
/// shutdown.
#[derive(Debug)]
pub enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

/// Who may connect to a Unix socket: its mode and, optionally, its group.
/// The default, 0600 and the server's own group, lets only its owner (root)
/// connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketPerms {
    pub mode: u32,
    pub group: Option<u32>,
}

impl Default for SocketPerms {
    fn default() -> Self {
        SocketPerms {
            mode: 0o600,
            group: None,
        }
    }
}

/// The process umask is shared by all threads: binds take turns.
static UMASK_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Bind a Unix socket at `path` in an existing directory, replacing a stale socket file (one nobody
/// accepts on) but refusing one that is live or a path that is not a socket.
///
/// The socket file is created 0600 (bound under umask 0177: there is no
/// moment when the caller's umask decides who may connect), then given its
/// group and, last, the wider mode `perms` asks for.
pub fn bind_unix(path: &Path, perms: SocketPerms) -> io::Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(md) = std::fs::symlink_metadata(path) {
        if !md.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{} is in use by a running server", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    if let Some(dir) = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{}: the directory {} does not exist; create it first (zmem creates none)",
                path.display(),
                dir.display()
            ),
        ));
    }
    let l = {
        let _g = UMASK_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: umask only swaps the process's file mode mask; restored below.
        let old = unsafe { libc::umask(0o177) };
        let l = UnixListener::bind(path);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        l?
    };
    set_perms(path, perms)?;
    Ok(l)
}

fn set_perms(path: &Path, perms: SocketPerms) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(gid) = perms.group {
        std::os::unix::fs::chown(path, None, Some(gid))?;
    }
    if perms.mode != 0o600 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perms.mode & 0o777))?;
    }
    Ok(())
}

impl Listener {
    /// Binds `l`; a Unix socket gets `perms` (see [`bind_unix`]).
    pub fn bind(l: &Listen, perms: SocketPerms) -> io::Result<Listener> {
        let listener = match l {
            Listen::Unix(p) => Listener::Unix(bind_unix(p, perms)?, p.clone()),
            Listen::Tcp(a) => Listener::Tcp(TcpListener::bind(a)?),
        };
        match &listener {
            Listener::Unix(u, _) => u.set_nonblocking(true)?,
            Listener::Tcp(t) => t.set_nonblocking(true)?,
        }
        Ok(listener)
    }

    /// The bound address (for `tcp:HOST:0`).
    pub fn local(&self) -> Listen {
        match self {
            Listener::Unix(_, p) => Listen::Unix(p.clone()),
            Listener::Tcp(t) => {
                Listen::Tcp(t.local_addr().expect("bound TCP listener has an address"))
            }
        }
    }

    /// Accept one connection; `Ok(None)` when none is waiting.
    pub fn accept(&self) -> io::Result<Option<Stream>> {
        let r = match self {
            Listener::Unix(u, _) => u
                .accept()
                .map(|(s, _)| s.set_nonblocking(false).map(|()| Stream::Unix(s))),
            Listener::Tcp(t) => t.accept().map(|(s, _)| {
                s.set_nonblocking(false)
                    .and_then(|()| s.set_nodelay(true))
                    .map(|()| Stream::Tcp(s))
            }),
        };
        match r {
            Ok(s) => s.map(Some),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}
