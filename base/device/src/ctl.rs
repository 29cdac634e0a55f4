//! The control socket's protocol (docs/ctl-protocol.md): one request line per
//! connection (`read ATTR`, `write ATTR VALUE`, `list`) answered `ok\n` +
//! payload or `err ERRNO_NAME message\n`. Both ends live here: the codec the
//! server (`zmem-nbd`) answers with, and [`CtlClient`], the [`AttrTarget`]
//! that `zmem ctl` and the policy engine use for served devices.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use zmem_kernel::{AttrError, Errno};

use crate::AttrTarget;

/// Longest request (bytes, newline included).
pub const MAX_REQUEST: usize = 64 * 1024;

/// Longest reply a client reads.
pub const MAX_REPLY: u64 = 16 << 20;

/// A parsed control request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlRequest {
    Read(String),
    Write(String, String),
    List,
}

fn bad(msg: impl Into<String>) -> AttrError {
    AttrError::new(Errno::EINVAL, msg)
}

fn check_attr(a: &str) -> Result<String, AttrError> {
    if a.is_empty() || a.contains('/') || a.chars().any(char::is_whitespace) {
        return Err(bad(format!("bad attribute name {a:?}")));
    }
    Ok(a.to_string())
}

/// Parse one request (the bytes the client sent, up to end of stream).
/// Exactly one line: a trailing `\n` is optional, nothing may follow it.
pub fn parse_request(raw: &[u8]) -> Result<CtlRequest, AttrError> {
    if raw.len() > MAX_REQUEST {
        return Err(bad(format!("request longer than {MAX_REQUEST} bytes")));
    }
    let text = std::str::from_utf8(raw).map_err(|_| bad("request is not UTF-8"))?;
    let line = text.strip_suffix('\n').unwrap_or(text);
    if line.contains('\n') {
        return Err(bad("one request per connection (found more than one line)"));
    }
    if line == "list" {
        return Ok(CtlRequest::List);
    }
    if let Some(a) = line.strip_prefix("read ") {
        return Ok(CtlRequest::Read(check_attr(a)?));
    }
    if let Some(rest) = line.strip_prefix("write ") {
        let (a, v) = rest
            .split_once(' ')
            .ok_or_else(|| bad("write needs an attribute and a value"))?;
        return Ok(CtlRequest::Write(check_attr(a)?, v.to_string()));
    }
    let shown: String = line.chars().take(40).collect();
    Err(bad(format!(
        "unknown request {shown:?} (read ATTR, write ATTR VALUE, list)"
    )))
}

/// The request line for `req` (what [`parse_request`] reads back).
pub fn render_request(req: &CtlRequest) -> String {
    match req {
        CtlRequest::List => "list\n".to_string(),
        CtlRequest::Read(a) => format!("read {a}\n"),
        CtlRequest::Write(a, v) => format!("write {a} {v}\n"),
    }
}

/// The reply bytes for a result: `ok\n<payload>` or `err ERRNO message\n`.
pub fn render_reply(r: &Result<String, AttrError>) -> Vec<u8> {
    match r {
        Ok(payload) => format!("ok\n{payload}").into_bytes(),
        Err(e) => format!("err {} {}\n", e.errno.name(), e.message.replace('\n', " ")).into_bytes(),
    }
}

/// Parse a reply: `ok\n<payload>` or `err ERRNO_NAME message\n`.
pub fn parse_reply(reply: &[u8]) -> Result<String, AttrError> {
    let proto = |m: String| AttrError::new(Errno::EPROTO, m);
    let text = std::str::from_utf8(reply).map_err(|_| proto("reply is not UTF-8".into()))?;
    if let Some(payload) = text.strip_prefix("ok\n") {
        return Ok(payload.strip_suffix('\n').unwrap_or(payload).to_string());
    }
    if text == "ok" {
        return Ok(String::new());
    }
    if let Some(rest) = text.strip_prefix("err ") {
        let rest = rest.trim_end_matches('\n');
        let (name, msg) = rest.split_once(' ').unwrap_or((rest, ""));
        if let Some(errno) = Errno::from_name(name) {
            return Err(AttrError::new(errno, msg));
        }
        if !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            // An errno this side has no name for: keep the server's words.
            return Err(AttrError::new(Errno::EIO, format!("{name} {msg}")));
        }
    }
    let shown: String = text.chars().take(80).collect();
    Err(proto(format!("malformed reply {shown:?}")))
}

/// How long a client waits for the reply to a read or `list` by default.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client waits for the reply to a write by default: a write
/// runs what it asks for (`writeback`, `recompress`, `compact`) before the
/// server answers, as a sysfs write returns when the kernel is done.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(600);

/// Client of a `zmem serve` control socket.
#[derive(Debug, Clone)]
pub struct CtlClient {
    path: PathBuf,
    /// Overrides [`READ_TIMEOUT`] and [`WRITE_TIMEOUT`].
    timeout: Option<Duration>,
}

impl CtlClient {
    pub fn new(path: impl Into<PathBuf>) -> CtlClient {
        CtlClient {
            path: path.into(),
            timeout: None,
        }
    }

    /// Wait at most `t` for any reply (connecting and sending included).
    pub fn with_timeout(mut self, t: Duration) -> CtlClient {
        self.timeout = Some(t);
        self
    }

    /// How long `req`'s reply is waited for.
    pub fn timeout_for(&self, req: &CtlRequest) -> Duration {
        self.timeout.unwrap_or(match req {
            CtlRequest::Write(..) => WRITE_TIMEOUT,
            _ => READ_TIMEOUT,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One request, one reply: `Ok(payload)` or the server's error.
    pub fn request(&self, req: &CtlRequest) -> Result<String, AttrError> {
        let line = render_request(req);
        if line.matches('\n').count() != 1 {
            return Err(AttrError::new(Errno::EINVAL, "request must be one line"));
        }
        let timeout = self.timeout_for(req);
        let shown = line.trim_end();
        let io_err =
            |e: io::Error| AttrError::io(&e, format!("control socket {}", self.path.display()));
        let late = |sent: bool| {
            let what = if sent {
                "the request was sent; the server is still working on it or has stopped, and a write may complete (or have completed) anyway: read the attribute to see what happened"
            } else {
                "the request was not sent (the server accepts no requests: stopped or overloaded)"
            };
            AttrError::new(
                Errno::ETIMEDOUT,
                format!(
                    "control socket {}: no reply to `{shown}` within {} s: {what}",
                    self.path.display(),
                    timeout.as_secs_f64()
                ),
            )
        };
        let timed_out = |e: &io::Error| {
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        };
        let mut s = connect(&self.path, timeout).map_err(|e| {
            if timed_out(&e) {
                late(false)
            } else {
                io_err(e)
            }
        })?;
        s.set_read_timeout(Some(timeout)).map_err(io_err)?;
        s.write_all(line.as_bytes()).map_err(|e| {
            if timed_out(&e) {
                late(false)
            } else {
                io_err(e)
            }
        })?;
        s.shutdown(std::net::Shutdown::Write).map_err(io_err)?;
        let deadline = std::time::Instant::now() + timeout;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 8192];
        // The whole reply within the deadline, not each read.
        loop {
            let left = deadline
                .checked_duration_since(std::time::Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| late(true))?;
            s.set_read_timeout(Some(left)).map_err(io_err)?;
            match s.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) if reply.len() as u64 + n as u64 > MAX_REPLY => {
                    return Err(AttrError::new(
                        Errno::EPROTO,
                        format!("reply longer than {MAX_REPLY} bytes"),
                    ))
                }
                Ok(n) => reply.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => return Err(late(true)),
                Err(e) => return Err(io_err(e)),
            }
        }
        parse_reply(&reply)
    }
}

/// Connect to `path` within `timeout`: `SO_SNDTIMEO` is set before
/// `connect(2)`, which bounds its wait on a server that accepts nothing
/// (stopped, its backlog full), where `UnixStream::connect` waits forever.
fn connect(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: socket(2) takes no pointers; a non-negative result is a new
    // descriptor nobody else owns, given to OwnedFd at once.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above: `fd` is valid and owned by nothing else.
    let sock = UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
    sock.set_write_timeout(Some(timeout))?;
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket path empty or too long",
        ));
    }
    for (d, b) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    // SAFETY: `addr` is a valid sockaddr_un that outlives the call, and
    // `len` does not exceed its size.
    let r = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len as libc::socklen_t,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINPROGRESS) => {
                io::Error::new(io::ErrorKind::TimedOut, "connect timed out")
            }
            _ => e,
        });
    }
    Ok(sock)
}

fn check_token(s: &str, what: &str) -> Result<(), AttrError> {
    if s.is_empty() || s.contains(char::is_whitespace) {
        return Err(AttrError::new(Errno::EINVAL, format!("bad {what} {s:?}")));
    }
    Ok(())
}

impl AttrTarget for CtlClient {
    fn label(&self) -> String {
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("serve:{stem}")
    }
    fn read_attr(&self, name: &str) -> Result<String, AttrError> {
        check_token(name, "attribute name")?;
        self.request(&CtlRequest::Read(name.to_string()))
    }
    fn write_attr(&self, name: &str, value: &str) -> Result<(), AttrError> {
        check_token(name, "attribute name")?;
        if value.contains('\n') {
            return Err(AttrError::new(Errno::EINVAL, "value must be one line"));
        }
        self.request(&CtlRequest::Write(name.to_string(), value.to_string()))
            .map(|_| ())
    }
    fn list_attrs(&self) -> Result<Vec<String>, AttrError> {
        let text = self.request(&CtlRequest::List)?;
        Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(parse_request(b"list\n").unwrap(), CtlRequest::List);
        assert_eq!(
            parse_request(b"read mm_stat\n").unwrap(),
            CtlRequest::Read("mm_stat".into())
        );
        assert_eq!(
            parse_request(b"read mm_stat").unwrap(),
            CtlRequest::Read("mm_stat".into())
        );
        assert_eq!(
            parse_request(b"write recompress type=idle threshold=1024\n").unwrap(),
            CtlRequest::Write("recompress".into(), "type=idle threshold=1024".into())
        );
        for bad in [
            &b"read \n"[..],
            b"read a/b\n",
            b"write disksize\n",
            b"list\nlist\n",
            b"frob\n",
            &[0xff, b'\n'],
        ] {
            assert_eq!(
                parse_request(bad).unwrap_err().errno,
                Errno::EINVAL,
                "{bad:?}"
            );
        }
        assert!(parse_request(&vec![b'a'; MAX_REQUEST + 1]).is_err());
        for r in [
            CtlRequest::List,
            CtlRequest::Read("a".into()),
            CtlRequest::Write("b".into(), "c d".into()),
        ] {
            assert_eq!(parse_request(render_request(&r).as_bytes()).unwrap(), r);
        }
    }

    #[test]
    fn replies() {
        assert_eq!(parse_reply(b"ok\n1 2 3\n").unwrap(), "1 2 3");
        assert_eq!(parse_reply(b"ok\n").unwrap(), "");
        assert_eq!(parse_reply(b"ok\na\nb\n").unwrap(), "a\nb");
        let e = parse_reply(b"err EBUSY device is initialised\n").unwrap_err();
        assert_eq!(
            (e.errno, e.message.as_str()),
            (Errno::EBUSY, "device is initialised")
        );
        assert_eq!(parse_reply(b"hello").unwrap_err().errno, Errno::EPROTO);
        assert_eq!(
            parse_reply(b"err lower case\n").unwrap_err().errno,
            Errno::EPROTO
        );
        assert_eq!(parse_reply(&[0xff, 0xfe]).unwrap_err().errno, Errno::EPROTO);
        let e = AttrError::new(Errno::ENOSPC, "full\nreally");
        assert_eq!(
            parse_reply(&render_reply(&Err(e))).unwrap_err().message,
            "full really"
        );
        assert_eq!(parse_reply(&render_reply(&Ok("1\n".into()))).unwrap(), "1");
    }

    #[test]
    fn random_reply_text_never_panics() {
        let alphabet = b"0123456789 \n\t[]#:-xyzokerr";
        for s in zmem_kernel::testutil::random_strings(0x2545F4914F6CDD1D, alphabet, 90, 5000) {
            let _ = parse_reply(s.as_bytes());
            let _ = parse_request(s.as_bytes());
        }
    }
}
