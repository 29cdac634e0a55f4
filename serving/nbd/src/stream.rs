//! A connected socket (Unix or TCP) and a listener for either, with the few
//! operations the server needs.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
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
    /// (`SO_PEERCRED`); over TCP from this machine the user owning the peer's socket
    /// (/proc/net/tcp{,6}), so 127.0.0.2, 127.0.0.3, … are one client; from elsewhere
    /// the peer's network (/24 for IPv4, /64 for IPv6), so one host's many addresses are one.
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
            Stream::Tcp(s) => match (s.peer_addr(), s.local_addr()) {
                (Ok(peer), Ok(local)) => tcp_client(peer, local),
                _ => "tcp client".into(),
            },
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

/// The per-client key of a TCP peer (see [`Stream::client`]).
fn tcp_client(peer: SocketAddr, local: SocketAddr) -> String {
    let ip = canonical(peer.ip());
    if ip.is_loopback() || ip == canonical(local.ip()) {
        let table = if peer.is_ipv4() {
            "/proc/net/tcp"
        } else {
            "/proc/net/tcp6"
        };
        let text = std::fs::read_to_string(table).unwrap_or_default();
        return match socket_owner(&text, peer, local) {
            Some(uid) => format!("uid {uid}"),
            None => "this machine".into(),
        };
    }
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.0/24", o[0], o[1], o[2])
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The uid owning the socket whose local end is `peer` and remote end `local`, from the text of
/// /proc/net/tcp or tcp6 (`sl local rem st queues tr retrnsmt uid …`; addresses are the raw
/// network-order words printed as native-endian hex, net/ipv4/tcp_ipv4.c get_tcp4_sock).
fn socket_owner(text: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (want_local, want_remote) = (proc_net_addr(peer), proc_net_addr(local));
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 7
            && f[1].eq_ignore_ascii_case(&want_local)
            && f[2].eq_ignore_ascii_case(&want_remote))
        .then(|| f[7].parse().ok())
        .flatten()
    })
}

/// An address as /proc/net/tcp{,6} prints it: `0100007F:1F90` for 127.0.0.1:8080.
fn proc_net_addr(a: SocketAddr) -> String {
    let words = |b: &[u8]| -> String {
        b.chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect()
    };
    let ip = match a.ip() {
        IpAddr::V4(v4) => words(&v4.octets()),
        IpAddr::V6(v6) => words(&v6.octets()),
    };
    format!("{ip}:{:04X}", a.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_peer_is_its_sockets_owner() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                    0: 0100007F:2710 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n\
                    1: 0200007F:C350 0100007F:2710 01 00000000:00000000 00:00000000 00000000 65534        0 2 1\n";
        let peer: SocketAddr = "127.0.0.2:50000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:10000".parse().unwrap();
        assert_eq!(proc_net_addr(peer), "0200007F:C350");
        assert_eq!(socket_owner(text, peer, local), Some(65534));
        assert_eq!(socket_owner(text, local, peer), None);
    }

    #[test]
    fn remote_peers_are_counted_by_network() {
        let local: SocketAddr = "192.0.2.1:10809".parse().unwrap();
        let a = tcp_client("198.51.100.7:1".parse().unwrap(), local);
        let b = tcp_client("198.51.100.200:2".parse().unwrap(), local);
        assert_eq!(a, "198.51.100.0/24");
        assert_eq!(a, b);
        let v6 = tcp_client(
            "[2001:db8:1:2:3::9]:1".parse().unwrap(),
            "[2001:db8::1]:10809".parse().unwrap(),
        );
        assert_eq!(v6, "2001:db8:1:2::/64");
        let mapped = tcp_client("[::ffff:198.51.100.9]:1".parse().unwrap(), local);
        assert_eq!(mapped, "198.51.100.0/24");
    }

    /// The real kernel's table: a connection from 127.0.0.3 is owned by this process's user.
    #[test]
    fn this_machines_connection_is_found_in_proc_net_tcp() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let key = tcp_client(server.peer_addr().unwrap(), server.local_addr().unwrap());
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        assert_eq!(key, format!("uid {uid}"));
        drop(c);
    }
}
