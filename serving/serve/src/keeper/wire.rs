//! The keeper's wire: one `SOCK_SEQPACKET` Unix socket message per request
//! and per reply, a verb line and `key value` lines (at most 4 KiB), with up
//! to two file descriptors (`SCM_RIGHTS`); peer credentials and pidfds.
//! The few libc calls std has no safe form of live here.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::Duration;

/// The largest message.
pub(crate) const MSG_MAX: usize = 4096;
/// Descriptors one message carries at most.
const FDS_MAX: usize = 2;
/// How long one send or receive may take.
pub(crate) const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// A verb and its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Msg {
    pub verb: String,
    pub fields: Vec<(String, String)>,
}

impl Msg {
    pub fn new(verb: &str) -> Msg {
        Msg {
            verb: verb.into(),
            fields: Vec::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl ToString) -> Msg {
        self.fields.push((key.into(), value.to_string()));
        self
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn encode(&self) -> io::Result<Vec<u8>> {
        let mut s = format!("{}\n", self.verb);
        for (k, v) in &self.fields {
            if k.contains([' ', '\n']) || v.contains('\n') {
                return Err(io::Error::other(format!("field {k:?} cannot be sent")));
            }
            s.push_str(&format!("{k} {v}\n"));
        }
        if s.len() > MSG_MAX {
            return Err(io::Error::other("message too long"));
        }
        Ok(s.into_bytes())
    }

    fn decode(b: &[u8]) -> io::Result<Msg> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed keeper message");
        let text = std::str::from_utf8(b).map_err(|_| bad())?;
        let mut lines = text.lines();
        let verb = lines.next().filter(|v| !v.is_empty()).ok_or_else(bad)?;
        let mut m = Msg::new(verb);
        for l in lines {
            let (k, v) = l.split_once(' ').unwrap_or((l, ""));
            m.fields.push((k.into(), v.into()));
        }
        Ok(m)
    }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: socket takes integers and returns a new fd or -1.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a new fd, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn address(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let b = path.as_os_str().as_bytes();
    if b.is_empty() || b.len() >= a.sun_path.len() || b.contains(&0) {
        return Err(io::Error::other(format!(
            "{}: not usable as a Unix socket path (1 to {} bytes)",
            path.display(),
            a.sun_path.len() - 1
        )));
    }
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in a.sun_path.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + b.len() + 1;
    Ok((a, len as libc::socklen_t))
}

/// A listening socket at `path`, mode 0600 from the start (umask while
/// binding: the caller is single-threaded).
pub(crate) fn listen(path: &Path) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    let (a, len) = address(path)?;
    // SAFETY: umask only swaps the process's file mode mask; restored below.
    let old = unsafe { libc::umask(0o177) };
    // SAFETY: `a` is a valid sockaddr_un of `len` bytes; fd is open.
    let r = unsafe { libc::bind(fd.as_raw_fd(), (&raw const a).cast(), len) };
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    cvt(r)?;
    // SAFETY: listen on an open, bound socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 4) })?;
    Ok(fd)
}

/// Listen again on `l` from this process: the credentials a client reads
/// with `SO_PEERCRED` are the ones of the last `listen` (the kernel's
/// `unix_listen`), so the forked keeper answers as itself, not as the
/// server that bound the socket (and may have died).
pub(crate) fn relisten(l: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: listen on an open, bound socket.
    cvt(unsafe { libc::listen(l.as_raw_fd(), 4) }).map(|_| ())
}

/// Connected to the keeper at `path`, with send and receive timeouts.
pub(crate) fn connect(path: &Path) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    let (a, len) = address(path)?;
    // SAFETY: `a` is a valid sockaddr_un of `len` bytes; fd is open.
    cvt(unsafe { libc::connect(fd.as_raw_fd(), (&raw const a).cast(), len) })?;
    set_timeouts(fd.as_raw_fd())?;
    Ok(fd)
}

/// The next connection on `l`, with timeouts.
pub(crate) fn accept(l: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // SAFETY: accept4 on a listening socket; no address wanted.
    let fd = cvt(unsafe {
        libc::accept4(
            l.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    })?;
    // SAFETY: a new fd, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    set_timeouts(fd.as_raw_fd())?;
    Ok(fd)
}

fn set_timeouts(fd: RawFd) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: IO_TIMEOUT.as_secs() as libc::time_t,
        tv_usec: 0,
    };
    for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: setsockopt with a timeval of its size.
        cvt(unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&raw const tv).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
    }
    Ok(())
}

/// The peer's (pid, uid) (`SO_PEERCRED`: as it was when it connected).
pub(crate) fn peer(fd: BorrowedFd<'_>) -> io::Result<(i32, u32)> {
    // SAFETY: ucred is plain data.
    let mut c: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt into a ucred of `len` bytes.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut c).cast(),
            &mut len,
        )
    })?;
    Ok((c.pid, c.uid))
}

/// Send `m` with `fds` in one message.
pub(crate) fn send(fd: BorrowedFd<'_>, m: &Msg, fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    assert!(fds.len() <= FDS_MAX);
    let data = m.encode()?;
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; 8]; // room for CMSG_SPACE of two ints, aligned
                              // SAFETY: msghdr is plain data.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(fds) as u32;
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        h.msg_control = cbuf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is arithmetic.
        h.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as _;
        // SAFETY: msg_control points at cbuf, large enough for one header
        // and two ints (CMSG_SPACE(8) <= 64); the data copy stays inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&h);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
            std::ptr::copy_nonoverlapping(raw.as_ptr(), libc::CMSG_DATA(c).cast(), raw.len());
        }
    }
    // SAFETY: h describes live buffers for the duration of the call.
    let n = unsafe { libc::sendmsg(fd.as_raw_fd(), &h, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != data.len() {
        return Err(io::Error::other("short send to the keeper"));
    }
    Ok(())
}

/// Receive one message and the descriptors that came with it (a message
/// cut short, or with more descriptors than allowed, is refused).
pub(crate) fn recv(fd: BorrowedFd<'_>) -> io::Result<(Msg, Vec<OwnedFd>)> {
    let mut data = vec![0u8; MSG_MAX];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_control = cbuf.as_mut_ptr().cast();
    h.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: h describes live buffers for the duration of the call.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut h, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control; the CMSG_* walk stays inside
    // msg_controllen, and every received fd is taken into an OwnedFd once.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&h, c);
        }
    }
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the keeper's peer closed the connection",
        ));
    }
    if h.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 || fds.len() > FDS_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "keeper message too long or with too many descriptors",
        ));
    }
    Ok((Msg::decode(&data[..n as usize])?, fds))
}

/// A pidfd of process `pid`.
pub(crate) fn pidfd(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Wait up to `ms` (-1: for ever) for one of `fds` to be readable (a
/// pidfd: its process exited); which were.
pub(crate) fn poll(fds: &[BorrowedFd<'_>], ms: i32) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // SAFETY: p is a live array of p.len() pollfds.
        let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
        if r >= 0 {
            return Ok(p.iter().map(|x| x.revents != 0).collect());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether the process of `pidfd` has exited.
pub(crate) fn exited(pidfd: BorrowedFd<'_>) -> bool {
    poll(&[pidfd], 0).map(|r| r[0]).unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_message_and_two_descriptors_cross_a_socket() {
        let dir = zmem_files::testutil::ScratchDir::new("keeper-wire");
        let path = dir.path().join("k.keep");
        let l = listen(&path).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let c = connect(&path).unwrap();
        let s = accept(l.as_fd()).unwrap();
        let (pid, uid) = peer(s.as_fd()).unwrap();
        assert_eq!(pid as u32, std::process::id());
        // SAFETY: geteuid has no preconditions.
        assert_eq!(uid, unsafe { libc::geteuid() });
        let a = std::fs::File::open("/proc/self/stat").unwrap();
        let m = Msg::new("PUT").with("disksize", 4096).with("algo", "lz4");
        send(c.as_fd(), &m, &[a.as_fd(), a.as_fd()]).unwrap();
        let (got, fds) = recv(s.as_fd()).unwrap();
        assert_eq!(got, m);
        assert_eq!(fds.len(), 2);
        assert_eq!(got.get("algo"), Some("lz4"));
        // A field that would break the framing is refused before sending.
        assert!(send(c.as_fd(), &Msg::new("PUT").with("a b", 1), &[]).is_err());
        drop(c);
        assert!(recv(s.as_fd()).is_err(), "EOF is an error");
    }
}
